-- wrk script of the crash section: POST pre-written bodies, rotating
-- through them, to any route (the path of the URL, query included).
--
--   wrk -t2 -c4 -d5s -s bench/bodies.lua 'http://HOST:PORT/v1/crashes?store=false' -- DIR COUNT CTYPE [HEADER]
--
-- DIR holds body-000 .. body-(COUNT-1) (no extension); CTYPE is their
-- Content-Type; HEADER, when given, one more header line "Name: value"
-- (e.g. "Prefer: return=minimal"). Requests are formatted once per thread in init(); each
-- thread starts at a different body. A body with an incident identifier (a
-- crash report: the UUID after "Incident Identifier:", "incident" or
-- "incident_id") is another report on every request: its identifier,
-- wherever it occurs, is replaced by one made of a per-run nonce, the
-- thread and a counter, so a stored post is stored (the server keeps a
-- report posted again once, issue 23) and the bench measures the store. response() counts answers by status;
-- done() sums the threads' counters and prints the lines bench.py reads:
--   lua: responses N non2xx N errors N
--   lua: status 201 N          (one line per status seen)
--   lua: latency_us p50 N p90 N p99 N p999 N max N mean N

local threads = {}

function setup(thread)
   thread:set("id", #threads)
   table.insert(threads, thread)
end

function init(args)
   local dir, count, ctype = args[1], tonumber(args[2]), args[3]
   if not dir or not count or not ctype then
      error("usage: -s bodies.lua URL -- BODY_DIR COUNT CONTENT_TYPE")
   end
   local headers = { ["Content-Type"] = ctype }
   if args[4] and args[4] ~= "" then
      local name, value = args[4]:match("^([^:]+):%s*(.*)$")
      if not name then
         error("HEADER must be 'Name: value', not " .. args[4])
      end
      headers[name] = value
   end
   requests = {}
   pieces = {}
   for i = 0, count - 1 do
      local name = string.format("%s/body-%03d", dir, i)
      local f = assert(io.open(name, "rb"))
      local body = f:read("*a")
      f:close()
      requests[#requests + 1] = wrk.format("POST", wrk.path, headers, body)
      pieces[#pieces + 1] = split_at_incident(body)
   end
   req_headers = headers
   local r = io.open("/dev/urandom", "rb")
   local b = r and r:read(4) or tostring(os.time())
   if r then r:close() end
   nonce = string.format("%02X%02X%02X%02X", b:byte(1, 4))
   posted = 0
   nreq = #requests
   cur = (id or 0) * 7 % nreq
   responses = 0
   non2xx = 0
   statuses = {}
end

local UUID = "%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x"

-- The body cut around every occurrence of its incident identifier (a list
-- of the pieces between them), or nil when it has none.
function split_at_incident(body)
   local id
   for _, mark in ipairs({ "Incident Identifier:%s*", '"incident"%s*:%s*"', '"incident_id"%s*:%s*"' }) do
      local _, e = body:find(mark)
      if e then
         local s2, e2 = body:find(UUID, e + 1)
         if s2 == e + 1 then
            id = body:sub(s2, e2)
            break
         end
      end
   end
   if not id then
      return nil
   end
   local out, at = {}, 1
   while true do
      local s2, e2 = body:find(id, at, true)
      if not s2 then
         break
      end
      out[#out + 1] = body:sub(at, s2 - 1)
      at = e2 + 1
   end
   out[#out + 1] = body:sub(at)
   return out
end

function request()
   cur = cur % nreq + 1
   local p = pieces[cur]
   if not p then
      return requests[cur]
   end
   posted = posted + 1
   local incident = string.format("%s-%04X-4%03X-8000-%012X", nonce, (id or 0) % 65536,
                            math.floor(posted / 2^48) % 4096, posted % 2^48)
   return wrk.format("POST", wrk.path, req_headers, table.concat(p, incident))
end

function response(status, headers, body)
   responses = responses + 1
   statuses[status] = (statuses[status] or 0) + 1
   if status < 200 or status > 299 then
      non2xx = non2xx + 1
      if non2xx <= 3 then
         io.stderr:write(string.format("non-2xx %d: %s\n", status, body:sub(1, 300)))
      end
   end
end

function done(summary, latency, requests)
   local total, bad, by = 0, 0, {}
   for _, t in ipairs(threads) do
      total = total + t:get("responses")
      bad = bad + t:get("non2xx")
      for s, n in pairs(t:get("statuses")) do
         by[s] = (by[s] or 0) + n
      end
   end
   local e = summary.errors
   local errors = e.connect + e.read + e.write + e.timeout
   io.write(string.format("lua: responses %d non2xx %d errors %d\n", total, bad, errors))
   for s, n in pairs(by) do
      io.write(string.format("lua: status %d %d\n", s, n))
   end
   io.write(string.format("lua: latency_us p50 %d p90 %d p99 %d p999 %d max %d mean %.1f\n",
                          latency:percentile(50), latency:percentile(90),
                          latency:percentile(99), latency:percentile(99.9),
                          latency.max, latency.mean))
end
