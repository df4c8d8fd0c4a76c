// Behaviour every page shares. The Content-Security-Policy allows no inline script or event
// handler attributes, so what used to be `onsubmit="..."` lives here.
(function () {
  "use strict";

  // <form data-confirm="Delete this chat?"> asks before it submits.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form && form.getAttribute ? form.getAttribute("data-confirm") : null;
    if (question && !window.confirm(question)) { event.preventDefault(); }
  }, true);

  // <select data-autosubmit> (the header's language switch) submits its form when changed.
  document.addEventListener("change", function (event) {
    var select = event.target;
    if (select && select.hasAttribute && select.hasAttribute("data-autosubmit") && select.form) {
      select.form.submit();
    }
  });
})();
