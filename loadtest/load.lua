-- wrk script of the load test (loadtest/run.sh).
--
-- Each connection pauses before each request, for a time drawn uniformly from [0, 2 × mean] ms,
-- so that N connections offer a rate with arrivals spread out, rather than saturating the server
-- as fast as it answers (wrk is closed-loop) or firing in lockstep.
--
-- wrk keeps one latency histogram over every response. The script counts refusals (503, 429)
-- and admitted calls (200) per thread, and at the end reads the histogram at the quantiles where
-- the refusals' and the admitted calls' own p99 fall, which is exact when every refusal is
-- answered faster than every admitted call (an admitted call holds a worker for 50 ms).
--
-- Usage: wrk -s load.lua ... -- <mean-pause-ms>
local mean = 100
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  if args[1] ~= nil then mean = tonumber(args[1]) end
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
  refused = 0
  admitted = 0
end

function delay()
  return math.random(0, 2 * mean)
end

function response(status, headers, body)
  if status == 503 or status == 429 then
    refused = refused + 1
  elseif status == 200 then
    admitted = admitted + 1
  end
end

function done(summary, latency, requests)
  local r, a = 0, 0
  for _, t in ipairs(threads) do
    r = r + t:get("refused")
    a = a + t:get("admitted")
  end
  local n = r + a
  io.write(string.format("WARD refused=%d admitted=%d\n", r, a))
  if n > 0 and r > 0 then
    io.write(string.format("WARD refused_p99_ms=%.3f\n", latency:percentile(99 * r / n) / 1000))
  end
  if n > 0 and a > 0 then
    io.write(string.format("WARD admitted_p99_ms=%.3f\n", latency:percentile(100 * r / n + 99 * a / n) / 1000))
  end
end
