new Promise(r => setTimeout(() => r(1), 50))
