// The first search result's href once its click token is in it, else
// false (for chromedp.Poll).
(() => {
  const a = document.querySelector('#results a.result');
  return a && /[?&]ct=/.test(a.href) ? a.href : false;
})()
