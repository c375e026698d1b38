// The overview kept up to date: each payload of the overview JSON comes over a websocket,
// with polling as the fallback, and goes onto the page (payload.js); the badge
// (#live-state) says which way they come, or why they stopped.
// Polling stops for good (body[data-polling=stopped]) when asking again cannot help: a URL
// parameter the server rejects (400) or a signed-out session (401, or the login redirect).
// The badge says "live" only while pushes keep coming (live_state.js); an open socket
// without them turns "stale since HH:MM:SS UTC" and the page polls. When Redis fails the
// server says so (close code 4503 with a reason, or `live_updates` in the JSON): a banner
// says live updates are unavailable and why, and the page polls (body[data-live=off]).
(function () {
  "use strict";
  var overview = window.FleetScopeOverview = window.FleetScopeOverview || {};
  var config = document.getElementById("overview-config");
  var jsonUrl = config.dataset.jsonUrl;
  var wsPath = config.dataset.wsPath;
  var group = config.dataset.group;
  var isDefaultView = config.dataset.live === "true";
  var loginUrl = config.dataset.loginUrl;
  // The page already says which parameter cannot be used: nothing to ask the server.
  var pageProblem = config.dataset.problem;
  var state = document.getElementById("live-state");
  var viewAlert = document.getElementById("view-alert");
  var liveBanner = document.getElementById("live-banner");
  var liveState = new window.FleetScopeLiveState(2 * Number(config.dataset.liveInterval || 15));
  var POLL_SECONDS = 15;
  var CLOSE_LIVE_UNAVAILABLE = 4503;  // dashboard/consumers.py
  var pollTimer = null;
  var socket = null;
  var retries = 0;
  var reconnectTimer = null;  // set while the socket is closed and a retry is pending
  var openTimer = null;  // set while a socket that just opened has yet to prove it stays
  var OPEN_GRACE_MS = 1000;
  var stopped = false;

  function setState(text, kind) {
    state.textContent = text;
    state.className = "badge badge-" + kind;
  }

  function showAlert(parts) {
    // parts: strings (text) and {text, href} (links), in order.
    viewAlert.textContent = "";
    parts.forEach(function (part) {
      if (typeof part === "string") {
        viewAlert.appendChild(document.createTextNode(part));
        return;
      }
      var link = document.createElement("a");
      link.href = part.href;
      link.textContent = part.text;
      viewAlert.appendChild(link);
    });
    viewAlert.hidden = false;
  }

  function stop(text, kind) {
    stopped = true;
    clearTimeout(pollTimer);
    pollTimer = null;
    document.body.dataset.polling = "stopped";
    setState(text, kind);
  }

  function signedOut() {
    if (stopped) { return; }
    if (socket) {
      socket.onclose = null;
      socket.close();
    }
    var next = window.location.pathname + window.location.search;
    showAlert(["Signed out — ", {text: "log in again", href: loginUrl + "?next=" + encodeURIComponent(next)}]);
    stop("signed out", "muted");
  }

  function badParameter(body) {
    var name = body.parameter || "";
    var params = new URLSearchParams(window.location.search);
    params.delete(name);
    var rest = params.toString();
    var parts = [body.error || "a URL parameter cannot be used"];
    if (name && name !== "group") {
      parts.push(" ", {text: "show the view without " + name, href: window.location.pathname + (rest ? "?" + rest : "")});
      var control = document.querySelector('#filters [name="' + CSS.escape(name) + '"]');
      if (control) { control.setAttribute("aria-invalid", "true"); }
    }
    if (document.body.dataset.rendered === "true") {
      parts.push(" (the charts below are the last good view, no longer updated)");
    }
    showAlert(parts);
    stop("stopped", "warning");
  }

  function poll() {
    if (stopped) { return; }
    var params = new URLSearchParams(window.location.search);
    params.delete("render");  // how the page draws, nothing the server reads
    if (group) { params.set("group", group); }
    var query = params.toString();
    // redirect: "manual": a redirect here can only be to the login page, whose HTML is no
    // answer to read (the server says 401 itself; this covers anything that redirects).
    fetch(jsonUrl + (query ? "?" + query : ""), {credentials: "same-origin", redirect: "manual", headers: {"Accept": "application/json"}})
      .then(function (response) {
        if (response.status === 401 || response.type === "opaqueredirect") {
          signedOut();
          return null;
        }
        var type = (response.headers.get("Content-Type") || "").split(";")[0];
        if (type !== "application/json") {
          // A proxy's error page, say: worth asking again later.
          throw new Error("HTTP " + response.status + " answered with " + (type || "no content type") + ", not JSON");
        }
        return response.text().then(function (text) {
          var body = JSON.parse(text);
          if (response.status === 400) {
            badParameter(body);
            return null;
          }
          if (!response.ok) { throw new Error(body.error || "HTTP " + response.status); }
          return {body: body, text: text};
        });
      })
      .then(function (answer) {
        if (!answer || stopped) { return; }
        overview.renderText(answer.text, answer.body);
        var updates = answer.body.live_updates;
        if (isDefaultView && updates && updates.status === "off") {
          liveOff("live updates unavailable: " + updates.message);
        } else if (reconnectTimer !== null) {
          // The server answers without trouble again (Redis is back, say): reconnect now
          // rather than wait out a backoff that may have grown to a minute.
          clearTimeout(reconnectTimer);
          reconnectTimer = null;
          retries = 0;
          connect();
        }
        if (state.textContent.indexOf("update failed") === 0) { setState("polling", "muted"); }
      })
      .catch(function (error) { if (!stopped) { setState("update failed: " + error.message, "bad"); } });
  }

  function schedulePolling() {
    clearTimeout(pollTimer);
    if (stopped) { return; }
    document.body.dataset.polling = "on";
    // Slow down in hidden tabs: nobody is looking, so no need to ask as often.
    var delay = document.hidden ? 60000 : POLL_SECONDS * 1000;
    pollTimer = setTimeout(function () { poll(); schedulePolling(); }, delay);
  }

  var inflating = Promise.resolve();

  function pushedText(data) {
    if (typeof data === "string") { return Promise.resolve(data); }
    var stream = new Blob([data]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text();
  }

  function connect() {
    if (stopped) { return; }
    var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + window.location.host + wsPath);
    socket.onopen = function () {
      // A server that cannot serve live updates (Redis down) accepts, then closes with 4503
      // at once: the socket counts as live only once it has stayed open a moment, so a
      // refusal neither flickers the badge, nor cancels a due poll, nor resets the backoff.
      openTimer = setTimeout(function () {
        openTimer = null;
        if (!socket || socket.readyState !== WebSocket.OPEN) { return; }
        retries = 0;
        liveState.opened(Date.now());
        showLive();
      }, OPEN_GRACE_MS);
    };
    // Pushes are gzip-compressed JSON in binary frames, compressed once for every viewer
    // on the server; inflating is asynchronous, so pushes are rendered one after another.
    socket.binaryType = "arraybuffer";
    socket.onmessage = function (event) {
      var data = event.data;
      inflating = inflating
        .then(function () { return pushedText(data); })
        .then(function (text) {
          if (stopped) { return; }
          var body = JSON.parse(text);
          if (liveState.pushed(body.live, Date.now())) { showLive(); }
          overview.renderText(text, body);
        })
        .catch(function (error) { setState("update failed: " + error.message, "bad"); });
    };
    socket.onclose = function (event) {
      clearTimeout(openTimer);
      openTimer = null;
      liveState.closed();
      if (event.code === 4401) {
        socket = null;
        signedOut();
        return;
      }
      if (event.code === CLOSE_LIVE_UNAVAILABLE) {
        liveOff(event.reason || "live updates unavailable");
      } else {
        document.body.dataset.live = "closed";
      }
      setState("polling", "warning");
      // Keep a poll already due: rescheduling it on every refused socket would put it off
      // for as long as sockets keep being refused.
      if (pollTimer === null) { schedulePolling(); }
      retries += 1;
      reconnectTimer = setTimeout(function () {
        reconnectTimer = null;
        connect();
      }, Math.min(60000, 1000 * Math.pow(2, retries)));
    };
  }

  function showLive() {
    liveBanner.hidden = true;
    liveBanner.textContent = "";
    document.body.dataset.live = "live";
    setState("live", "ok");
    clearTimeout(pollTimer);
    pollTimer = null;
    document.body.dataset.polling = "off";
  }

  function liveOff(why) {
    liveBanner.textContent = why + "; polling every " + POLL_SECONDS + " s";
    liveBanner.hidden = false;
    document.body.dataset.live = "off";
  }

  setInterval(function () {
    if (socket && socket.readyState === WebSocket.OPEN) { socket.send("ping"); }
  }, 60000);

  // An open socket without a fresh push is stale: say since when (UTC) and poll meanwhile;
  // the next push makes it live again.
  setInterval(function () {
    if (stopped || !socket || socket.readyState !== WebSocket.OPEN) { return; }
    var now = liveState.at(Date.now());
    if (now.state !== "stale" || document.body.dataset.live === "stale") { return; }
    document.body.dataset.live = "stale";
    setState("stale since " + now.since.slice(11, 19) + " UTC, polling", "warning");
    poll();
    schedulePolling();
  }, 1000);

  if (pageProblem) {
    stop("stopped", "warning");
    return;
  }
  poll();
  if (isDefaultView && "WebSocket" in window) {
    connect();
  } else {
    setState("polling", "muted");
    schedulePolling();
  }
})();
