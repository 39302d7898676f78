module fairsched/bench/io/peers/go_echo

go 1.19
