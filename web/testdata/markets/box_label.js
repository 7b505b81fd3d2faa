({
	label: document.querySelector('.adlink-label').textContent,
	aria: document.querySelector('.adlink-box').getAttribute('aria-label'),
	prices: [...document.querySelectorAll('.adlink-price')].map(e => e.textContent),
})
