// Scrolls the page to its end as the first refused impression beacon's
// answer comes, before the widget sees it: its links leave view.
(() => {
	const f = window.fetch;
	let done = false;
	window.fetch = function (u) {
		const p = f.apply(this, arguments);
		if (String(u).includes('/v1/impression')) {
			p.then(r => {
				if (!done && r.status >= 500) {
					done = true;
					scrollTo(0, document.body.scrollHeight);
				}
			}, () => {});
		}
		return p;
	};
})()
