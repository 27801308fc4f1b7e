-- wrk script: POST pre-generated /v1/symbolicate bodies, rotating through them.
--
--   wrk -t2 -c8 -d10s -s bench/symbolicate.lua http://HOST:PORT/v1/symbolicate -- DIR COUNT
--
-- DIR holds body-000.json .. body-(COUNT-1).json (bench.py bodies). Requests
-- are formatted once per thread in init(); each thread starts at a different
-- body. response() counts answers and non-2xx statuses; done() sums the
-- per-thread counters and prints one line run.sh reads:
--   lua: responses N non2xx N errors N

local threads = {}

function setup(thread)
   thread:set("id", #threads)
   table.insert(threads, thread)
end

function init(args)
   local dir, count = args[1], tonumber(args[2])
   if not dir or not count then
      error("usage: -s symbolicate.lua URL -- BODY_DIR COUNT")
   end
   local path = wrk.path
   local headers = { ["Content-Type"] = "application/json" }
   requests = {}
   for i = 0, count - 1 do
      local name = string.format("%s/body-%03d.json", dir, i)
      local f = assert(io.open(name, "rb"))
      local body = f:read("*a")
      f:close()
      requests[#requests + 1] = wrk.format("POST", path, headers, body)
   end
   nreq = #requests
   cur = (id or 0) * 7 % nreq -- spread threads over the bodies
   responses = 0
   non2xx = 0
end

function request()
   cur = cur % nreq + 1
   return requests[cur]
end

function response(status, headers, body)
   responses = responses + 1
   if status < 200 or status > 299 then
      non2xx = non2xx + 1
      if non2xx <= 3 then
         io.stderr:write(string.format("non-2xx %d: %s\n", status, body:sub(1, 300)))
      end
   end
end

function done(summary, latency, requests)
   local total, bad = 0, 0
   for _, t in ipairs(threads) do
      total = total + t:get("responses")
      bad = bad + t:get("non2xx")
   end
   local e = summary.errors
   local errors = e.connect + e.read + e.write + e.timeout
   io.write(string.format("lua: responses %d non2xx %d errors %d\n", total, bad, errors))
end
