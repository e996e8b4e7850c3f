-- wrk script for `make bench`: one request shape per run, chosen by the
-- script's arguments, and a machine-readable summary line at the end.
--
--   wrk ... -s report.lua URL -- MODE KEY [PREFIX]
--
--   get               GET URL with X-User-Key: KEY (wrk builds it once)
--   put-settings      PUT /user/settings; the key rotates over KEY0..KEY7, one
--                     document per user, as many users' apps would send
--   put-inbox         PUT /inbox/PREFIX-<thread>-<n>: a new message id on
--                     every request (201), so every request appends and writes
--
-- done() prints `BENCH {json}` with the totals and the whole latency
-- histogram (microseconds), so that runs of one server can be merged into
-- exact percentiles.

local settings_body = '{"updatedAt": "20260518T044304.095000Z", "weightCalibrationFactor": 0.9990998620664758, '
    .. '"units": "metric", "height": 172, "reminders": {"weighIn": "07:30", "enabled": true}}'
local message_body = '{"kg": 71.3, "fat": 18.2, "measuredAt": "2026-05-18T04:43:04.095Z", "device": "mirror-1"}'

local threads = {}
local thread_count = 0

function setup(thread)
    thread_count = thread_count + 1
    thread:set("tid", thread_count)
    table.insert(threads, thread)
end

local mode, key, prefix
local n = 0

function init(args)
    mode, key, prefix = args[1], args[2], args[3] or "m"
    if mode == "get" then
        wrk.headers["X-User-Key"] = key
    elseif mode == "put-settings" then
        wrk.method = "PUT"
        wrk.headers["Content-Type"] = "application/json"
    elseif mode == "put-inbox" then
        wrk.method = "PUT"
        wrk.headers["Content-Type"] = "application/json"
        wrk.headers["X-User-Key"] = key
    else
        error("unknown mode " .. tostring(mode))
    end
end

function request()
    if mode == "get" then
        return wrk.format(nil, nil, nil, nil)
    end
    n = n + 1
    if mode == "put-settings" then
        wrk.headers["X-User-Key"] = key .. (n % 8)
        return wrk.format(nil, "/user/settings", nil, settings_body)
    end
    return wrk.format(nil, "/inbox/" .. prefix .. "-" .. tid .. "-" .. n, nil, message_body)
end

function done(summary, latency, requests)
    local parts = {}
    for i = 1, #latency do
        local value, count = latency(i)
        parts[#parts + 1] = string.format("[%d,%d]", value, count)
    end
    local e = summary.errors
    io.write(string.format(
        'BENCH {"requests": %d, "duration_us": %d, "connect_errors": %d, "read_errors": %d, '
            .. '"write_errors": %d, "status_errors": %d, "timeouts": %d, "histogram": [%s]}\n',
        summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
        table.concat(parts, ",")))
end
