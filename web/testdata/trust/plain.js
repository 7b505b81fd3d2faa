// The long tasks ([start, duration]) of a page without the widget, read
// once it has loaded and no sooner than minMs after its start, as a view
// with the widget is (realpage.js).
(minMs) => new Promise(resolve => {
	const read = () => {
		if (document.readyState !== "complete" || performance.now() < minMs) return setTimeout(read, 10);
		resolve(window.adlinkTasks || []);
	};
	read();
})
