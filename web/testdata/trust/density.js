adlink.ready.then(r => {
	const links = [...document.querySelectorAll("a.adlink-intext")];
	const byAd = {};
	links.forEach(a => { byAd[a.href] = (byAd[a.href] || 0) + 1; });
	return {
		linked: links.map(a => a.textContent),
		perAd: Math.max(0, ...Object.values(byAd)),
		beside: links.filter(a => {
			const p = a.previousSibling, n = a.nextSibling;
			const link = x => x && x.nodeType === 1 && x.dataset.adlink === "intext";
			return (p && p.nodeType === 3 && !p.nodeValue.trim() && link(p.previousSibling)) ||
				(n && n.nodeType === 3 && !n.nodeValue.trim() && link(n.nextSibling)) || link(p) || link(n);
		}).length,
		words: document.querySelector("article").innerText.split(/\s+/).filter(Boolean).length,
	};
})
