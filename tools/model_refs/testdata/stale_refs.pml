/* stale_refs.pml: fixture for model_refs_test. Each reference below is wrong in its own way
 * and must be reported; the last one is right and must not be. */

/* code: sync/auto_reset_event.cc Send: if (flag_.exchange(1, std::memory_order_acq_rel) != 0) { */
/* code: sync/no_such_file.cc Send: if (flag_.exchange(1, std::memory_order_seq_cst) != 0) { */
/* code: sync/auto_reset_event.cc SendTwice: if (flag_.exchange(1, std::memory_order_seq_cst) != 0) { */
/* code: sync/auto_reset_event.cc Send: { */
/* code: sync/auto_reset_event.cc waiters_.load(std::memory_order_seq_cst) */
/* code: sync/auto_reset_event.cc   Send:   if (flag_.exchange(1,   std::memory_order_seq_cst) != 0) {   */
