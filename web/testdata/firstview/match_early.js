(text) => {
	let v;
	Object.defineProperty(window, "adlink", {configurable: true, get: () => v, set: x => {
		v = x;
		window.earlyMatch = x.matchText(text).then(r => r.link.length);
	}});
}
