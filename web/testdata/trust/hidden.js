adlink.ready.then(r => ({
	linked: [...document.querySelectorAll("a.adlink-intext")].map(a => a.textContent),
	hidden: [...document.querySelectorAll(".h a, template, noscript")].flatMap(e =>
		e.localName === "template" ? [...e.content.querySelectorAll("a")].map(a => a.textContent) :
		e.localName === "noscript" ? (e.textContent.includes("adlink") ? ["noscript"] : []) : [e.textContent]),
	keywords: r.links.flatMap(l => l.keywords || []),
}))
