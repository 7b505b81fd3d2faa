// Counts, in window.beacons, the impression beacons the page sent and,
// in window.beaconsDone, those answered or failed, in every page it runs
// in, before the page's scripts.
(() => {
	const f = window.fetch;
	window.beacons = 0;
	window.beaconsDone = 0;
	window.fetch = function (u) {
		const p = f.apply(this, arguments);
		if (String(u).includes('/v1/impression')) {
			window.beacons++;
			p.then(() => {}, () => {}).then(() => window.beaconsDone++);
		}
		return p;
	};
})()
