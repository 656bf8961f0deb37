-- POSTs one fixed JSON body (the first script argument) on every request.
-- A static request lets wrk build the bytes once, so the load generator stays cheap
-- on a 2-core machine it shares with the server.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

function init(args)
   wrk.body = args[1]
end
