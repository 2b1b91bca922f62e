// Copy buttons: <button data-copy-target="ID"> copies the value of the element #ID.
// A static file, because the Content-Security-Policy refuses inline scripts.
(function () {
  "use strict";
  function copy(button) {
    var target = document.getElementById(button.getAttribute("data-copy-target"));
    var status = document.getElementById("copy-status");
    if (!target) return;
    var done = function () { if (status) status.textContent = "Copied."; };
    var failed = function () {
      target.focus();
      target.select();
      if (status) status.textContent = "Copying is blocked here: the key is selected, press Ctrl+C.";
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(target.value).then(done, failed);
    } else {
      target.select();
      try { document.execCommand("copy") ? done() : failed(); } catch (e) { failed(); }
    }
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy-target]");
    if (button) copy(button);
  });
})();
