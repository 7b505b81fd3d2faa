// How many elements out of the page an IntersectionObserver still
// observes, once a few frames have passed (its notices come with them).
new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 200))))
	.then(() => [...window.observing].filter(el => !el.isConnected).length)
