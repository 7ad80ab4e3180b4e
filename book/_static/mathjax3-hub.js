/* ipywidgets' controls typeset their labels with the MathJax 2 API,
   MathJax.Hub.Queue(["Typeset", MathJax.Hub, element]) (jupyter-widgets/ipywidgets#3829),
   which MathJax 3 does not have: on a page with math and widgets every label threw
   "Cannot read properties of undefined (reading 'Queue')". This gives MathJax 3 that one
   call. Loaded with `defer` after MathJax on the pages that embed widgets (nb_ipywidgets_js
   in _config.yml), so it runs after MathJax and before the widget manager renders (on load). */
(function () {
  "use strict";
  function typeset(mathjax, element) {
    mathjax.startup.promise
      .then(function () { return mathjax.typesetPromise([element]); })
      .catch(function (error) { console.warn("MathJax could not typeset a widget label:", error); });
  }
  function install() {
    var mathjax = window.MathJax;
    if (!mathjax || !mathjax.version || mathjax.Hub) return;  // no MathJax 3 here, or a MathJax 2
    mathjax.Hub = {
      Queue: function () {
        for (var i = 0; i < arguments.length; i++) {
          var command = arguments[i];
          if (Array.isArray(command) && command[0] === "Typeset" && command[2] && mathjax.startup) {
            typeset(mathjax, command[2]);
          }
        }
      }
    };
  }
  install();
  document.addEventListener("DOMContentLoaded", install);
})();
