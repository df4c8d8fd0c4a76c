// The admin's copy buttons (im_app/admin.py): a button with data-copy-from="<id>" copies that
// field's text, and says data-copied for a moment. A served file, as the CSP allows no inline script.
(function () {
  "use strict";
  function copied(button) {
    var label = button.textContent;
    button.textContent = button.getAttribute("data-copied") || label;
    window.setTimeout(function () { button.textContent = label; }, 1500);
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button[data-copy-from]") : null;
    if (!button) { return; }
    event.preventDefault();
    var field = document.getElementById(button.getAttribute("data-copy-from"));
    if (!field) { return; }
    var text = field.value;
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { copied(button); });
      return;
    }
    // Plain http off localhost has no clipboard API: select the text and copy the selection.
    field.focus();
    field.select();
    try { if (document.execCommand("copy")) { copied(button); } } catch (e) { /* selected: Ctrl+C works */ }
  });
})();
