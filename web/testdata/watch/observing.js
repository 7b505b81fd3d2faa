// Keeps window.observing, the elements an IntersectionObserver of the
// page observes now, in every page it runs in, before the page's scripts.
(() => {
	const P = IntersectionObserver.prototype, observe = P.observe, unobserve = P.unobserve, disconnect = P.disconnect;
	const of = new WeakMap();
	window.observing = new Set();
	P.observe = function (el) {
		if (!of.has(this)) of.set(this, new Set());
		of.get(this).add(el);
		window.observing.add(el);
		return observe.call(this, el);
	};
	P.unobserve = function (el) {
		if (of.has(this)) of.get(this).delete(el);
		window.observing.delete(el);
		return unobserve.call(this, el);
	};
	P.disconnect = function () {
		(of.get(this) || []).forEach(el => window.observing.delete(el));
		of.delete(this);
		return disconnect.call(this);
	};
})()
