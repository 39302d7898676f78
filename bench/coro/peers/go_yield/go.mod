module fairsched/bench/coro/peers/go_yield

go 1.19
