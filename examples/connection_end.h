// How the example servers count the end of a connection: which of three counters the IO
// error that ended it belongs to (examples/echo_server.h, examples/kv_server.h).
#ifndef FAIRSCHED_EXAMPLES_CONNECTION_END_H_
#define FAIRSCHED_EXAMPLES_CONNECTION_END_H_

#include "io/io_error.h"

namespace fairsched::examples {

// `timeout` for a deadline (kTimeout), `stopped` for the server's Stop (kCancelled,
// kShutdown), `peer` for the rest (end of stream, reset, ...).
template <typename Counter>
Counter* CounterOfEnd(const IoError& error, Counter* timeout, Counter* stopped, Counter* peer) {
  switch (error.code()) {
    case IoErrorCode::kTimeout:
      return timeout;
    case IoErrorCode::kCancelled:
    case IoErrorCode::kShutdown:
      return stopped;
    default:
      return peer;
  }
}

}  // namespace fairsched::examples

#endif  // FAIRSCHED_EXAMPLES_CONNECTION_END_H_
