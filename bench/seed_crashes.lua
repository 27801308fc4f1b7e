-- wrk script of the crash section: seeds the crash store through the API,
-- each request a report of its own (POST /v1/crashes, expects 201).
--
--   wrk -t2 -c4 -d3600s --timeout 30s -s bench/seed_crashes.lua http://HOST:PORT/v1/crashes \
--       -- DATA.lua TOTAL THREADS SEED
--
-- DATA.lua (bench.py crash-seed-data) returns the report template cut at its
-- variable places, and the groups, versions, OS versions and devices to
-- draw from. Each report: a fresh Incident Identifier, one group drawn with
-- a skewed law (rank = floor(n * u^3): a few groups take most crashes),
-- whose crashed-thread frames and app UUID are spliced in, and a version,
-- OS version and device drawn the same way. Thread i posts its share of
-- TOTAL reports, then asks GET /healthz (stores nothing; every 50 ms per
-- connection) until its last report is answered, then stops: exactly TOTAL
-- crashes are stored. The first request() of each thread is a GET
-- /healthz too: wrk calls request() once on the first thread to check the
-- script and throws that request away. wrk itself runs until bench.py sees
-- the count and interrupts it (SIGINT).
-- done() prints:
--   lua: posted N bytes N created N non2xx N errors N

local threads = {}

function setup(thread)
   thread:set("id", #threads)
   table.insert(threads, thread)
end

local function skewed(list)
   local u = math.random()
   return list[math.floor(#list * u * u * u) + 1]
end

local function uuid()
   return string.format("%08X-%04X-%04X-%04X-%04X%08X", math.random(0, 0x7fffffff),
                        math.random(0, 0xffff), math.random(0, 0xffff),
                        math.random(0, 0xffff), math.random(0, 0xffff),
                        math.random(0, 0x7fffffff))
end

function init(args)
   data = dofile(args[1])
   local total, nthreads, seed = tonumber(args[2]), tonumber(args[3]), tonumber(args[4])
   local me = id or 0
   quota = math.floor(total / nthreads) + ((me < total % nthreads) and 1 or 0)
   math.randomseed(seed * 1009 + me * 7919 + total)
   headers = { ["Content-Type"] = "text/plain" }
   health = wrk.format("GET", "/healthz")
   posted, bytes, created, non2xx, stopped, first = 0, 0, 0, 0, false, true
end

local function report()
   local g = skewed(data.groups)
   local v = {
      INCIDENT = uuid(),
      VERSION = skewed(data.versions),
      OS = skewed(data.os_versions),
      HW = skewed(data.models),
      FRAMES = g.frames,
      APPUUID = g.app_uuid,
   }
   local out = {}
   for i, p in ipairs(data.parts) do
      out[i] = (i % 2 == 1) and p or v[p]
   end
   return table.concat(out)
end

function delay()
   return posted >= quota and 50 or 0
end

function request()
   if first or posted >= quota then
      first = false
      return health
   end
   posted = posted + 1
   local body = report()
   bytes = bytes + #body
   return wrk.format("POST", wrk.path, headers, body)
end

function response(status, headers, body)
   if status == 201 then
      created = created + 1
   elseif status ~= 200 then
      non2xx = non2xx + 1
      if non2xx <= 3 then
         io.stderr:write(string.format("non-2xx %d: %s\n", status, body:sub(1, 300)))
      end
   end
   if not stopped and created + non2xx >= quota then
      stopped = true
      wrk.thread:stop()
   end
end

function done(summary, latency, requests)
   local p, b, c, n = 0, 0, 0, 0
   for _, t in ipairs(threads) do
      p = p + t:get("posted")
      b = b + t:get("bytes")
      c = c + t:get("created")
      n = n + t:get("non2xx")
   end
   local e = summary.errors
   io.write(string.format("lua: posted %d bytes %d created %d non2xx %d errors %d\n",
                          p, b, c, n, e.connect + e.read + e.write + e.timeout))
end
