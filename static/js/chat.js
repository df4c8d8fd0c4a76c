// Chat page behaviour that HTMX does not cover: Enter to send, clearing the composer after a
// send, holding a message typed while a turn runs (sent when the turn ends, kept across a reload),
// the new-chat page taking its session's address after its first message, the live title,
// "Stopping…" the moment Stop is pressed, keeping the newest content in view, the connection
// banner and tile timers.
(function () {
  "use strict";
  // Translations from /jsi18n/ (Django's JavaScript catalog, loaded first); English without it.
  var gettext = window.gettext || function (text) { return text; };

  function composer() { return document.getElementById("composer"); }
  function transcript() { return document.getElementById("transcript"); }

  function chatSection() { return document.querySelector("section.chat"); }
  function sessionId() { var c = chatSection(); return c ? c.getAttribute("data-session") || "" : ""; }

  function nearBottom(el) { return el.scrollHeight - el.scrollTop - el.clientHeight < 120; }

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (target && target.id === "message" && event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (target.value.trim()) { composer().requestSubmit(); }
    }
  });

  // ---- a message typed while a turn runs is held, never lost ---------------------------------
  var holding = false;
  var lastSent = "";

  function turnRunning() { return !!document.querySelector("#turn-controls button.stop"); }

  // The held text lives in this tab's sessionStorage, one entry per chat, so a reload (or a
  // crash of the tab's page) does not lose it; another tab never sends it twice.
  function keptKey() { var id = sessionId(); return id ? "ongrid.kept." + id : ""; }
  function keep(text) {
    var key = keptKey();
    try {
      if (key && text) { window.sessionStorage.setItem(key, text); }
      else if (key) { window.sessionStorage.removeItem(key); }
    } catch (e) { /* storage disabled: the text is still held by the page */ }
  }
  function kept() {
    var key = keptKey();
    try { return key ? window.sessionStorage.getItem(key) || "" : ""; } catch (e) { return ""; }
  }

  function showHold(on) {
    holding = on;
    var box = document.getElementById("message");
    keep(on && box ? box.value : "");
    var status = document.getElementById("composer-status");
    var text = document.getElementById("composer-status-text");
    var form = composer();
    if (form) { form.classList.toggle("holding", on); }
    if (text) { text.textContent = on ? gettext("A turn is running: your message is kept and will be sent when it ends.") : ""; }
    if (status) { status.hidden = !on; }
  }

  document.addEventListener("submit", function (event) {
    if (!event.target || event.target.id !== "composer") { return; }
    var box = document.getElementById("message");
    if (turnRunning() && box && box.value.trim()) {
      event.preventDefault();
      event.stopImmediatePropagation();
      showHold(true);
    }
  }, true);

  document.addEventListener("click", function (event) {
    if (event.target && event.target.id === "composer-cancel") {
      showHold(false);
      var box = document.getElementById("message");
      if (box) { box.focus(); }
    }
  });

  document.addEventListener("input", function (event) {
    if (holding && event.target && event.target.id === "message") { keep(event.target.value); }
  });

  document.addEventListener("htmx:wsBeforeSend", function () {
    var box = document.getElementById("message");
    lastSent = box ? box.value : "";
  });

  document.addEventListener("htmx:wsAfterSend", function () {
    var box = document.getElementById("message");
    if (box) { box.value = ""; box.focus(); }
  });

  // ---- the new-chat page: its first message makes the session --------------------------------
  function adoptCreatedChat() {
    var created = document.getElementById("chat-created");
    var section = chatSection();
    if (!created || !section || !created.hasAttribute("data-session")) { return; }
    section.setAttribute("data-session", created.getAttribute("data-session"));
    if (window.history && window.history.replaceState) {
      window.history.replaceState(null, "", created.getAttribute("data-url"));
    }
    created.removeAttribute("data-session");
  }

  // Frames name the session once there is one: a new-chat page's socket that reconnects then
  // follows that chat instead of making another.
  document.addEventListener("htmx:wsConfigSend", function (event) {
    var id = sessionId();
    if (id && event.detail && event.detail.parameters) { event.detail.parameters.session = parseInt(id, 10); }
  });

  function syncTitle() {
    var crumb = document.getElementById("crumb-title");
    if (crumb && crumb.textContent) { document.title = crumb.textContent + " · Ongrid"; }
  }

  document.addEventListener("htmx:afterSettle", syncTitle);  // a rename from the ⋯ menu

  function sendKeptIfIdle() {
    var box = document.getElementById("message");
    if (holding && !turnRunning()) {
      showHold(false);
      if (box && box.value.trim()) { composer().requestSubmit(); }
    }
  }

  function afterServerMessage() {
    adoptCreatedChat();
    syncTitle();
    var refused = document.getElementById("composer-held");
    var box = document.getElementById("message");
    if (refused && refused.hasAttribute("data-text")) {
      // The server refused it (a turn started elsewhere): put it back and hold it.
      var text = refused.getAttribute("data-text") || lastSent;
      refused.removeAttribute("data-text");
      if (box && !box.value.trim()) { box.value = text; }
      showHold(true);
    }
    sendKeptIfIdle();
  }

  // ---- Stop: say "Stopping…" at once ------------------------------------------------------
  document.addEventListener("htmx:beforeRequest", function (event) {
    var button = event.detail && event.detail.elt;
    if (!button || !button.matches || !button.matches("button.stop")) { return; }
    button.textContent = gettext("Stopping…");
    button.classList.add("stopping");
    button.setAttribute("aria-disabled", "true");
    var tile = button.closest(".tile");
    var tiles = tile ? [tile] : document.querySelectorAll(".tile.running, .tile.pending");
    tiles.forEach(function (t) {
      t.classList.add("stopping");
      var status = t.querySelector(".tile-status");
      if (status) { status.textContent = gettext("stopping…"); }
    });
  });

  var follow = true;
  document.addEventListener("htmx:wsBeforeMessage", function () {
    var t = transcript();
    follow = t ? nearBottom(t) : true;
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    var t = transcript();
    if (t && follow) { t.scrollTop = t.scrollHeight; }
    afterServerMessage();
  });

  function setConnection(text) {
    var el = document.getElementById("connection");
    if (el) { el.textContent = text; el.hidden = !text; }
  }
  document.addEventListener("htmx:wsOpen", function (event) {
    setConnection("");
    var section = chatSection();
    var wrapper = event.detail && event.detail.socketWrapper;
    if (section && wrapper && sessionId() && /\/ws\/chat\/new\/$/.test(section.getAttribute("ws-connect") || "")) {
      wrapper.send(JSON.stringify({ session: parseInt(sessionId(), 10) }));  // a reconnect: follow that chat
    }
    sendKeptIfIdle();  // a message kept before a reload, whose turn ended meanwhile
  });
  document.addEventListener("htmx:wsClose", function () {
    setConnection(gettext("Connection lost. Reconnecting… (running work continues on the server)"));
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
    var box = document.getElementById("message");
    var text = kept();
    if (box && text) {  // restored after a reload: held again, sent when the turn ends
      if (!box.value.trim()) { box.value = text; }
      showHold(true);
    }
  });
})();
