-- wrk script of the crash section: POST pre-written bodies, rotating
-- through them, to any route (the path of the URL, query included).
--
--   wrk -t2 -c4 -d5s -s bench/bodies.lua 'http://HOST:PORT/v1/crashes?store=false' -- DIR COUNT CTYPE [HEADER [UUID]]
--
-- DIR holds body-000 .. body-(COUNT-1) (no extension); CTYPE is their
-- Content-Type; HEADER, when given, one more header line "Name: value"
-- (e.g. "Prefer: return=minimal"; "" for none). Requests are formatted once per thread in
-- init(); each thread starts at a different body. UUID, when given, is a
-- string of the bodies (a report's incident identifier) that every request
-- replaces with a UUID of its own (a random prefix per thread and run, then
-- the thread's request counter): each request is then a distinct report,
-- as a store that keeps one copy of a report posted twice needs. response() counts answers by status;
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
   local uuid = args[5] ~= "" and args[5] or nil
   for i = 0, count - 1 do
      local name = string.format("%s/body-%03d", dir, i)
      local f = assert(io.open(name, "rb"))
      local body = f:read("*a")
      f:close()
      if uuid then
         -- the body cut at each occurrence, joined again per request
         local parts, at = {}, 1
         while true do
            local s, e = body:find(uuid, at, true)
            if not s then break end
            parts[#parts + 1] = body:sub(at, s - 1)
            at = e + 1
         end
         if #parts == 0 then
            error(name .. " does not contain " .. uuid)
         end
         parts[#parts + 1] = body:sub(at)
         requests[#requests + 1] = parts
      else
         requests[#requests + 1] = wrk.format("POST", wrk.path, headers, body)
      end
   end
   nreq = #requests
   cur = (id or 0) * 7 % nreq
   if uuid then
      -- os.time and the thread make the prefix differ between runs and threads
      math.randomseed(os.time() * 1009 + (id or 0) * 7919 + math.floor(os.clock() * 1e6))
      prefix = string.format("%08X-%04X-4%03X-A%03X-", math.random(0, 0x7fffffff),
                             math.random(0, 0xffff), math.random(0, 0xfff), math.random(0, 0xfff))
      seq = 0
      uheaders = headers
   end
   responses = 0
   non2xx = 0
   statuses = {}
end

function request()
   cur = cur % nreq + 1
   if not prefix then
      return requests[cur]
   end
   seq = seq + 1
   local body = table.concat(requests[cur], prefix .. string.format("%012X", seq))
   return wrk.format("POST", wrk.path, uheaders, body)
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
