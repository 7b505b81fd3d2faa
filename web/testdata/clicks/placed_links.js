// Every ad link the widget placed: its href, whether it carries a click
// token, whether it lies below the viewport; and the widget's timing of
// its first ad and first click token (ms since the page's start).
(() => ({
  links: Array.from(document.querySelectorAll('a.adlink-intext, aside.adlink-box a')).map((a) => ({
    href: a.href,
    token: /[?&]ct=/.test(a.href),
    below: a.getBoundingClientRect().top > innerHeight,
  })),
  firstAd: adlink.timing.firstAd,
  firstToken: adlink.timing.firstToken,
}))()
