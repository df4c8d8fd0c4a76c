// Page behaviour shared by chat, audit and admin-facing pages (no inline script: the CSP forbids it).
// - tells the server the browser's time zone (cookie ongrid_tz, read by web_app/timezones.py);
// - copy buttons on code blocks of rendered answers;
// - example prompts and Retry fill the composer; the phone's chat-list toggle; the chat filter.
(function () {
  "use strict";
  // Translations from /jsi18n/ (Django's JavaScript catalog, loaded first); English without it.
  var gettext = window.gettext || function (text) { return text; };

  // Time zone: the browser's IANA zone, so pages show local times. A user setting overrides it.
  try {
    var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (zone && document.cookie.indexOf("ongrid_tz=" + encodeURIComponent(zone)) === -1) {
      document.cookie = "ongrid_tz=" + encodeURIComponent(zone) + "; path=/; max-age=31536000; samesite=lax";
    }
  } catch (e) { /* no Intl: the server keeps UTC */ }

  function addCopyButtons(root) {
    (root || document).querySelectorAll(".answer pre").forEach(function (pre) {
      if (pre.querySelector("button.copy")) { return; }
      var button = document.createElement("button");
      button.type = "button";
      button.className = "copy";
      button.textContent = gettext("Copy");
      button.setAttribute("aria-label", gettext("Copy this code"));
      pre.appendChild(button);
    });
  }

  function copyText(text, button) {
    function done() { button.textContent = gettext("Copied"); setTimeout(function () { button.textContent = gettext("Copy"); }, 1500); }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () {});
      return;
    }
    var area = document.createElement("textarea");
    area.value = text;
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); done(); } catch (e) { /* nothing to do */ }
    area.remove();
  }

  function fillComposer(text, send) {
    var box = document.getElementById("message");
    var form = document.getElementById("composer");
    if (!box || !form) { return; }
    box.value = text;
    box.focus();
    if (send) { form.requestSubmit(); }
  }

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!(target instanceof Element)) { return; }
    if (target.matches("pre button.copy")) {
      var code = target.parentElement.querySelector("code") || target.parentElement;
      copyText(code === target.parentElement ? code.innerText.replace(/Copy$/, "") : code.innerText, target);
    } else if (target.matches("button.example[data-prompt]")) {
      fillComposer(target.getAttribute("data-prompt"), false);
    } else if (target.matches("button.retry")) {
      // Re-send the user message of the turn that failed.
      var turn = target.closest(".turn");
      var asked = turn ? turn.querySelector(".bubble.user") : null;
      if (!asked) {
        var all = document.querySelectorAll(".bubble.user");
        asked = all.length ? all[all.length - 1] : null;
      }
      if (asked) { target.disabled = true; fillComposer(asked.innerText.trim(), true); }
    } else if (target.matches(".sidebar-toggle")) {
      var open = document.body.classList.toggle("sidebar-open");
      target.setAttribute("aria-expanded", open ? "true" : "false");
    }
  });

  document.addEventListener("input", function (event) {
    var target = event.target;
    if (!target || target.id !== "chat-filter") { return; }
    var words = target.value.toLowerCase().trim();
    document.querySelectorAll("#chat-list > li").forEach(function (item) {
      item.hidden = words !== "" && item.textContent.toLowerCase().indexOf(words) === -1;
    });
  });

  document.addEventListener("DOMContentLoaded", function () { addCopyButtons(document); });
  document.addEventListener("htmx:load", function (event) { addCopyButtons(document); });
  document.addEventListener("htmx:wsAfterMessage", function () { addCopyButtons(document); });
})();
