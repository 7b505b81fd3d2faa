// The total blocking time of a page without the widget, read once it has
// loaded and as long after its start as the view with the widget was read.
(at) => new Promise(resolve => {
	const read = () => {
		if (document.readyState !== "complete" || performance.now() < at) return setTimeout(read, 10);
		let blocking = 0;
		for (const [, d] of window.adlinkTasks || []) blocking += d - 50;
		resolve(blocking);
	};
	read();
})
