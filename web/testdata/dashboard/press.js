// Clicks the button with the id given, as a reader would, and resolves
// with the dashboard's state once it has settled.
(id, settled) => {
  document.getElementById(id).click();
  return settled();
}
