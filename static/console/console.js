// The console's behaviour, as a static file (the Content-Security-Policy refuses inline
// scripts). Every page loads it; each part acts only where its markup is.
(function () {
  "use strict";

  // Navigation menus (<details class="menu">): one open at a time, closed by a click
  // elsewhere or Escape.
  function closeMenus(except) {
    document.querySelectorAll("details.menu[open]").forEach(function (menu) {
      if (menu !== except) menu.removeAttribute("open");
    });
  }
  document.addEventListener("click", function (event) {
    closeMenus(event.target.closest("details.menu"));
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") closeMenus(null);
  });

  // Destructive actions: a form or submit button with data-confirm="question" asks first.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var button = event.submitter;
    var question = (button && button.getAttribute("data-confirm")) || form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) event.preventDefault();
  }, true);
})();
