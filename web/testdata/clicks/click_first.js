// Makes the first in-text link open in this tab and returns its selector,
// for a mouse click.
(() => {
  const a = document.querySelector('a.adlink-intext');
  a.removeAttribute('target');
  a.id = 'first-ad';
  return '#first-ad';
})()
