// The old name of sync/auto_reset_event.h. `fairsched::Signal` is AutoResetEvent under its
// old name, kept so that code written against //sync:signal still builds (with a
// deprecation warning that names the new one). New code includes sync/auto_reset_event.h.
#ifndef FAIRSCHED_SYNC_SIGNAL_H_
#define FAIRSCHED_SYNC_SIGNAL_H_

#include "sync/auto_reset_event.h"

namespace fairsched {

using Signal [[deprecated("renamed fairsched::AutoResetEvent (sync/auto_reset_event.h)")]] =
    AutoResetEvent;

}  // namespace fairsched

#endif  // FAIRSCHED_SYNC_SIGNAL_H_
