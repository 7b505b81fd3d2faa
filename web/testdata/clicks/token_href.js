// The first in-text link's href once its click token is in it, else false
// (for chromedp.Poll).
(() => {
  const a = document.querySelector('a.adlink-intext');
  return a && /[?&]ct=/.test(a.href) ? a.href : false;
})()
