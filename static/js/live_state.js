// Whether the overview may call itself live: only while pushes keep coming. A websocket can
// stay open while nothing is pushed (the scheduler stuck behind a slow Prometheus, the
// publisher down), and a badge saying "live" over numbers a minute old misleads the on-call.
// Each push carries when it was made and how long until the next one is overdue
// (payload.live: pushed_at, stale_after_seconds; dashboard/live.py). Arrival times are this
// browser's own clock, so a skewed clock between browser and server changes nothing; the
// "since" shown is the server's time of the last push, in UTC.
(function () {
  "use strict";

  function LiveState(staleAfterSeconds) {
    this.staleAfterMs = staleAfterSeconds * 1000;
    this.lastPushAt = null;  // pushed_at of the newest push seen (UTC, ISO 8601)
    this.freshFrom = null;  // local time (ms) from which the stale window counts
  }

  // The socket opened: a push is due within the stale window, and until then it is live.
  LiveState.prototype.opened = function (now) {
    this.freshFrom = now;
  };

  LiveState.prototype.closed = function () {
    this.freshFrom = null;
  };

  // A message from the socket; true when it is a push not seen before (the re-sync on
  // connect repeats the latest one, which says nothing new about the publisher).
  LiveState.prototype.pushed = function (live, now) {
    if (!live || !live.pushed_at || live.pushed_at === this.lastPushAt) { return false; }
    this.lastPushAt = live.pushed_at;
    this.freshFrom = now;
    if (live.stale_after_seconds > 0) { this.staleAfterMs = live.stale_after_seconds * 1000; }
    return true;
  };

  // {state: "live"} while the socket is open and the last push (or the opening) is recent;
  // {state: "stale", since: ISO} when not; {state: "closed"} with no socket.
  LiveState.prototype.at = function (now) {
    if (this.freshFrom === null) { return {state: "closed"}; }
    if (now - this.freshFrom <= this.staleAfterMs) { return {state: "live"}; }
    return {state: "stale", since: this.lastPushAt || new Date(this.freshFrom).toISOString()};
  };

  window.FleetScopeLiveState = LiveState;
})();
