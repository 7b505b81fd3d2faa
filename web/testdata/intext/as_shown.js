adlink.ready.then(r => ({
	linked: [...document.querySelectorAll("a.adlink-intext")].map(a => a.textContent),
	hidden: document.querySelectorAll("p[style] a").length,
	keywords: r.links.flatMap(l => l.keywords || []),
}))
