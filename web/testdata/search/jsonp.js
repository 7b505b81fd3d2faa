(src) => new Promise((resolve, reject) => {
	window.my = {ads: resolve};
	const s = document.createElement('script');
	s.src = src;
	s.onerror = () => reject(new Error('script failed'));
	document.head.appendChild(s);
})
