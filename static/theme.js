// Applies the theme the visitor picked with the toggle (localStorage
// "agentsite-theme": "light" or "dark") before the first paint, so a dark
// page never flashes light. Loaded from <head> without defer; the CSP
// allows no inline script, hence this file. Without a stored choice (or
// without JavaScript) the CSS follows prefers-color-scheme.
(function () {
  "use strict";
  try {
    var t = window.localStorage.getItem("agentsite-theme");
    if (t === "light" || t === "dark") document.documentElement.setAttribute("data-theme", t);
  } catch (e) { /* storage refused: the system theme it is */ }
})();
