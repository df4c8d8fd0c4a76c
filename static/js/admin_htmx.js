// htmx in the admin (the alert source's live mapping preview): the same settings as the site's
// htmx-config meta (templates/base.html), which the admin's pages do not carry. Runs before
// DOMContentLoaded, when htmx applies them: no inline indicator style (the CSP refuses it), no eval.
(function () {
  "use strict";
  if (!window.htmx) { return; }
  window.htmx.config.includeIndicatorStyles = false;
  window.htmx.config.allowEval = false;
  window.htmx.config.allowScriptTags = false;
})();
