(() => {
	const now = Date.now;
	window.clockShift = 0;
	Date.now = () => now() + window.clockShift;
})()
