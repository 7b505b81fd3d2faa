// What the widget placed in a real page, once adlink.ready has settled:
// each in-text link with what a reader would object to, the page's words,
// its long tasks so far ([start, duration]), when the widget started and
// its marks.
// It reads no sooner than minMs after the page started, as plain.js does.
(minMs) => new Promise((resolve, reject) => {
	const t0 = performance.now();
	const wait = () => window.adlink ? adlink.ready.then(done, reject) :
		performance.now() - t0 > 5000 ? resolve({blocked: true}) : setTimeout(wait, 10);
	const norm = s => s.replace(/\u00ad/g, "").replace(/\s+/g, " ");
	const clipped = el => {
		for (let e = el; e && e !== document.body; e = e.parentElement) {
			const r = e.getBoundingClientRect(), st = getComputedStyle(e);
			if ((r.width < 2 || r.height < 2) && (st.overflow !== "visible" || st.clip !== "auto" || st.clipPath !== "none")) return true;
		}
		return false;
	};
	const hidden = a => {
		const r = a.getBoundingClientRect();
		return !a.checkVisibility({opacityProperty: true, visibilityProperty: true}) || !!a.closest("[aria-hidden=true], [inert], dialog:not([open])") ||
			r.width === 0 || r.height === 0 || r.right + scrollX <= 0 || r.bottom + scrollY <= 0 || clipped(a);
	};
	// A form counts unless it holds the page's text (a page in one form).
	const inForm = a => { const f = a.closest("form"); return !!f && f.textContent.length < document.body.textContent.length / 2; };
	const number = a => {
		const t = a.textContent, p = a.previousSibling, n = a.nextSibling;
		const before = p && p.nodeType === 3 ? p.nodeValue.slice(-2) : "", after = n && n.nodeType === 3 ? n.nodeValue.slice(0, 2) : "";
		return /^\d+$/.test(t.trim()) || (/^\d/.test(t) && /([+$#£€¥]|\d[.,:\/-])$/.test(before)) || (/\d$/.test(t) && /^([.,:\/-]\d|%)/.test(after));
	};
	// The link's text with up to 20 characters either side, from the
	// block it stands in.
	const context = a => {
		const block = a.parentElement.closest("p, li, td, th, dd, dt, blockquote, figcaption, h1, h2, h3, h4, h5, h6, div, section, article, body");
		const mark = "\u0001";
		const clone = block.cloneNode(true);
		const path = [];
		for (let e = a; e !== block; e = e.parentNode) path.unshift([...e.parentNode.childNodes].indexOf(e));
		let c = clone;
		for (const i of path) c = c.childNodes[i];
		c.textContent = mark + a.textContent + mark;
		const s = norm(clone.textContent), i = s.indexOf(mark), j = s.indexOf(mark, i + 1);
		return norm(s.slice(Math.max(0, i - 20), i) + s.slice(i + 1, j) + s.slice(j + 1, j + 21)).trim();
	};
	function done(r) {
		setTimeout(() => {
			const links = [...document.querySelectorAll("a.adlink-intext")];
			resolve({
				source: r.source,
				box: document.querySelectorAll("[data-adlink=box] a").length,
				words: (document.body.innerText.match(/\S+/g) || []).length,
				links: links.map(a => ({text: a.textContent, number: number(a), hidden: hidden(a), form: inForm(a), context: context(a)})),
				tasks: window.adlinkTasks || [],
				start: adlink.timing.start,
				marks: performance.getEntriesByType("mark").filter(m => m.name.startsWith("adlink:")).map(m => ({step: m.name.slice(7), at: m.startTime})),
			});
		}, Math.max(100, minMs - performance.now()));
	}
	wait();
})
