(async () => {
	history.pushState(null, "", "/app/2");
	const a = document.getElementById("a");
	const before = a.textContent;
	adlink.refresh(); // superseded at once
	a.innerHTML = "<h1>Kopfhörer im Test</h1><p>Gute Kopfhörer für das Samsung Galaxy S24.</p>";
	const r = await adlink.refresh();
	return {
		source: r.source,
		intext: document.querySelectorAll("a.adlink-intext").length,
		boxes: document.querySelectorAll("[data-adlink=box]").length,
		words: [...document.querySelectorAll("a.adlink-intext")].map(a => a.textContent),
		text: before,
		asked: performance.getEntriesByType("resource").some(e => e.name.includes("/v2/page/link") && e.name.includes(encodeURIComponent("/app/2"))),
	};
})()
