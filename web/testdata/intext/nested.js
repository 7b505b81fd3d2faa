({
	intext: document.querySelectorAll('a.adlink-intext').length,
	nested: [...document.querySelectorAll('a.adlink-intext')].filter(a => a.parentElement.closest('a, svg, math, label, textarea')).length,
	svgLinks: document.querySelectorAll('svg a').length,
})
