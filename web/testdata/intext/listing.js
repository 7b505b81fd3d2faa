({
	linked: [...document.querySelectorAll("a.adlink-intext")].map(a => a.textContent),
	boxIn: (document.querySelector("[data-adlink=box]").parentElement.closest("article, main") || {}).id || document.querySelector("[data-adlink=box]").parentElement.localName,
	inSecond: document.querySelectorAll("#a2 a.adlink-intext").length,
	outsideOf: [...document.querySelectorAll("a.adlink-intext")].filter(a => !a.closest("#story")).length,
})
