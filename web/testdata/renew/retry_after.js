// Records, in window.beaconLog, for each impression beacon the page sends,
// whether the wait the last refused one asked for (its Retry-After) had
// passed by a timer of that length the page set as that answer came,
// before the widget saw it: "waited" or "early"; and in window.beaconAds
// how many ads each carried.
(() => {
	const f = window.fetch;
	let waited = true;
	window.beaconLog = [];
	window.beaconAds = [];
	window.fetch = function (u) {
		const p = f.apply(this, arguments);
		if (String(u).includes('/v1/impression')) {
			window.beaconLog.push(waited ? 'waited' : 'early');
			window.beaconAds.push(new URL(u).searchParams.getAll('ad').length);
			p.then(r => {
				const s = Number(r.headers.get('Retry-After'));
				if (s > 0) {
					waited = false;
					setTimeout(() => { waited = true; }, s * 1000);
				}
			}, () => {});
		}
		return p;
	};
})()
