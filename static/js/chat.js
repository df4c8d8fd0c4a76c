// Chat page behaviour that HTMX does not cover: Enter to send, clearing the composer after a
// send, keeping the newest content in view, the connection banner and tile timers.
(function () {
  "use strict";

  function composer() { return document.getElementById("composer"); }
  function transcript() { return document.getElementById("transcript"); }

  function nearBottom(el) { return el.scrollHeight - el.scrollTop - el.clientHeight < 120; }

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (target && target.id === "message" && event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (target.value.trim()) { composer().requestSubmit(); }
    }
  });

  document.addEventListener("htmx:wsAfterSend", function () {
    var box = document.getElementById("message");
    if (box) { box.value = ""; box.focus(); }
  });

  var follow = true;
  document.addEventListener("htmx:wsBeforeMessage", function () {
    var t = transcript();
    follow = t ? nearBottom(t) : true;
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    var t = transcript();
    if (t && follow) { t.scrollTop = t.scrollHeight; }
  });

  function setConnection(text) {
    var el = document.getElementById("connection");
    if (el) { el.textContent = text; el.hidden = !text; }
  }
  document.addEventListener("htmx:wsOpen", function () { setConnection(""); });
  document.addEventListener("htmx:wsClose", function () {
    setConnection("Connection lost. Reconnecting… (running work continues on the server)");
  });

  function tick() {
    var now = Date.now();
    document.querySelectorAll(".tile.running[data-started], .tile.pending[data-started]").forEach(function (tile) {
      var started = Date.parse(tile.getAttribute("data-started"));
      var out = tile.querySelector(".tile-elapsed");
      if (!isNaN(started) && out) { out.textContent = Math.max(0, Math.round((now - started) / 1000)) + " s"; }
    });
  }
  setInterval(tick, 1000);

  document.addEventListener("DOMContentLoaded", function () {
    var t = transcript();
    if (t) { t.scrollTop = t.scrollHeight; }
  });
})();
