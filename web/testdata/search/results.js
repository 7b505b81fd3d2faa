(q) => new Promise(resolve => {
	const status = document.getElementById('status');
	const w = () => status.dataset.done === q ? resolve([...document.querySelectorAll('#results a.result')].map(a => [a.textContent, a.href])) : setTimeout(w, 5);
	w();
})
