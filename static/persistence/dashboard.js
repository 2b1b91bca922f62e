// The company picker submits on change (a static file: the Content-Security-Policy allows no
// inline handlers).
document.querySelectorAll("select[data-submit-on-change]").forEach((select) => {
  select.addEventListener("change", () => select.form.submit());
});
