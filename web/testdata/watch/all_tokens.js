// Whether every in-text link the widget placed has its click token (for
// chromedp.Poll).
(() => {
	const links = [...document.querySelectorAll('a.adlink-intext')];
	return links.length > 1 && links.every(a => /[?&]ct=/.test(a.href));
})()
