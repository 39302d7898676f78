---- MODULE stale_refs ----
\* Fixture for model_refs_test: TLA+ comment forms. The first is stale, the second right.
\* code: sync/auto_reset_event.cc ReceiveUntil: waiters_.fetch_add(2, std::memory_order_seq_cst);
(* code: sync/auto_reset_event.cc ReceiveUntil: waiters_.fetch_add(1, std::memory_order_seq_cst); *)
====
