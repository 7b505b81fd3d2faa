new Promise(r => {
	const tasks = [];
	const o = new PerformanceObserver(l => tasks.push(...l.getEntries()));
	o.observe({type: "longtask", buffered: true});
	// The buffered entries arrive in a task of their own; none may come.
	setTimeout(() => {
		tasks.push(...o.takeRecords());
		o.disconnect();
		let longest = 0, blocking = 0;
		for (const e of tasks) {
			if (e.startTime + e.duration < adlink.timing.start) continue;
			longest = Math.max(longest, e.duration);
			blocking += e.duration - 50;
		}
		r([longest, blocking]);
	}, 100);
})
