// Ending a run cleanly from outside it: Ctrl-C (SIGINT), SIGTERM, or a caller's request. The
// training loop looks after every step; a stopped run writes a checkpoint of where it is
// (mid-epoch included) from which `epoch train --resume` continues bit for bit.
#pragma once

namespace epoch::train {

/// Asks the running training to stop after its current step. `signal`: the signal that asked
/// (0: a caller). Async-signal-safe.
void request_stop(int signal = 0);
/// Whether a stop was asked for since the last clear_stop_request().
bool stop_requested();
/// The signal that asked for the stop (0: a caller, or none).
int stop_signal();
/// Forgets a request (a new run starts unasked).
void clear_stop_request();
/// SIGINT and SIGTERM ask for a stop; a second one ends the process at once, as by default.
void stop_on_signals();

}  // namespace epoch::train
