(async () => {
	const imgs = [...document.querySelectorAll('.adlink-box img')];
	await Promise.all(imgs.map(i => i.complete ? 0 : new Promise(r => { i.onload = i.onerror = r; })));
	return {
		intext: [...document.querySelectorAll('a.adlink-intext')].map(a => ({
			text: a.textContent, href: a.href, rel: a.rel,
			misplaced: !!a.parentElement.closest('a, script, style, textarea, select, button, label, [data-adlink=box], nav, h1, h2, h3, h4, h5, h6'),
		})),
		box: [...document.querySelectorAll('.adlink-box a.adlink-ad')].map(a => ({title: a.title, href: a.href, rel: a.rel})),
		logos: imgs.map(i => ({src: i.src, ok: i.complete && i.naturalWidth > 0})),
		firstAdMs: adlink.timing.firstAd - adlink.timing.start,
	};
})()
