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

  // The company configuration form (django-jsonform renders it after load, and again on
  // each change): rows of fields changed from the default are marked, sections without
  // such a field (or an error) start folded, and the filter box shows only matching fields.
  function configForm(form) {
    var changedData = document.getElementById("config-changed");
    var changed = changedData ? JSON.parse(changedData.textContent) : [];
    var filter = document.getElementById("config-filter");
    var count = document.getElementById("config-filter-count");
    var folded = false;

    function depth(group) {
      var n = 0;
      for (var el = group.parentElement; el && el !== form; el = el.parentElement) {
        if (el.classList.contains("rjf-form-group")) n += 1;
      }
      return n;
    }
    function title(group) {
      var t = group.querySelector(".rjf-form-group-title");
      return t ? t.textContent.replace(/\[[-+]\]|Edit/g, "").trim().toLowerCase() : "";
    }
    function markChanged() {
      var prefixes = changed.map(function (path) { return "rjf\u00a7" + path.split(".").join("\u00a7"); });
      form.querySelectorAll(".rjf-form-row").forEach(function (row) {
        var input = row.querySelector("[name^='rjf']");
        var name = input ? input.getAttribute("name") : "";
        var hit = prefixes.some(function (p) { return name === p || name.indexOf(p + "\u00a7") === 0; });
        row.classList.toggle("cfg-changed", hit);
      });
    }
    function fold() {
      var groups = form.querySelectorAll(".rjf-form-group");
      if (!groups.length) return false;
      groups.forEach(function (group) {
        if (depth(group) !== 2) return;
        if (group.querySelector(".cfg-changed, .rjf-error-text")) return;
        var button = group.querySelector(".rjf-form-group-title .rjf-collapse-button");
        if (button && button.textContent.indexOf("-") !== -1) button.click();
      });
      return true;
    }
    function applyFilter() {
      var q = filter ? filter.value.trim().toLowerCase() : "";
      form.classList.toggle("filtering", q !== "");
      var shown = 0;
      form.querySelectorAll(".rjf-form-row").forEach(function (row) {
        var match = q === "" || row.textContent.toLowerCase().indexOf(q) !== -1;
        for (var el = row.parentElement; !match && el && el !== form; el = el.parentElement) {
          if (el.classList.contains("rjf-form-group") && depth(el) > 0 && title(el).indexOf(q) !== -1) match = true;
        }
        row.classList.toggle("cfg-no-match", !match);
        if (match && !row.querySelector(".rjf-form-row")) shown += 1;
      });
      form.querySelectorAll(".rjf-form-group").forEach(function (group) {
        var empty = q !== "" && depth(group) > 0 && !group.querySelector(".rjf-form-row:not(.cfg-no-match)");
        group.classList.toggle("cfg-no-match", empty);
      });
      if (count) count.textContent = q === "" ? "" : shown + " field" + (shown === 1 ? "" : "s") + " match";
    }
    var scheduled = false;
    function refresh() {
      scheduled = false;
      observer.disconnect();
      markChanged();
      if (!folded) folded = fold();
      applyFilter();
      observer.observe(form, { childList: true, subtree: true });
    }
    var observer = new MutationObserver(function () {
      if (!scheduled) { scheduled = true; window.setTimeout(refresh, 0); }
    });
    observer.observe(form, { childList: true, subtree: true });
    if (filter) filter.addEventListener("input", applyFilter);
    refresh();
  }
  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("config-form");
    if (form) configForm(form);
  });
})();
