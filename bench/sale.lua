-- POST /api/v1/track/sale with a transaction_id unique across threads, connections and runs:
-- <run prefix>-<thread id>-<counter>.
-- Script arguments: run prefix, number of wrk threads, then the click ids to cycle through.
-- The Authorization header comes from wrk's -H option.
local threads = 0

function setup(thread)
   threads = threads + 1
   thread:set("thread_id", threads)
end

local prefix
local click_ids = {}
local counter = 0

function init(args)
   prefix = args[1]
   for i = 3, #args do
      click_ids[#click_ids + 1] = args[i]
   end
   if #click_ids == 0 then
      error("sale.lua: no click ids given")
   end
   -- Each thread starts on its own slice of the pool: threads in step on the same customers would
   -- queue on that customer's row lock, which real traffic does not do.
   counter = (thread_id - 1) * math.floor(#click_ids / tonumber(args[2]))
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/json"
end

function request()
   counter = counter + 1
   local click_id = click_ids[counter % #click_ids + 1]
   local body = string.format(
      '{"transaction_id": "%s-%d-%d", "amount_cents": 4900, "click_id": "%s"}',
      prefix, thread_id, counter, click_id
   )
   return wrk.format(nil, nil, nil, body)
end
