// Hides the tab (as the page sees it: document.visibilityState and a
// visibilitychange) as the first refused impression beacon's answer
// comes, before the widget sees it; window.showTab() shows it again.
(() => {
	const f = window.fetch;
	let hidden = false, done = false;
	Object.defineProperty(Document.prototype, 'visibilityState', { configurable: true, get: () => hidden ? 'hidden' : 'visible' });
	Object.defineProperty(Document.prototype, 'hidden', { configurable: true, get: () => hidden });
	const tell = h => { hidden = h; document.dispatchEvent(new Event('visibilitychange')); };
	window.showTab = () => (tell(false), true);
	window.fetch = function (u) {
		const p = f.apply(this, arguments);
		if (String(u).includes('/v1/impression')) {
			p.then(r => {
				if (!done && r.status >= 500) {
					done = true;
					tell(true);
				}
			}, () => {});
		}
		return p;
	};
})()
